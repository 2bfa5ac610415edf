

def texts(sources: list[str]) -> Iterator[Raw]:
    """Texts of predict's inputs by the rules of training, with the default columns: kept
    for dataset files written before `_text_files.text_inputs`, which the kinds use."""
    from ._text_files import text_inputs  # that module imports this one

    return text_inputs(sources)
