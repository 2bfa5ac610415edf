from PIL import Image
