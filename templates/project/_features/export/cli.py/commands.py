export
