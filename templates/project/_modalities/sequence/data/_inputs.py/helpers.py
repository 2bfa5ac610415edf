

def texts(sources: list[str]) -> Iterator[Raw]:
    """Texts of predict's inputs by the rules of training, with the default columns: kept
    for dataset files written before `_text_files.text_inputs`, which the kinds use."""
    return text_inputs(sources)
