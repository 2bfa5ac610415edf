        help="image files, folders (searched recursively) or globs such as 'photos/*.jpg'",
