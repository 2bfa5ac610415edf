    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
        return
