import zipfile
