from ._text_files import text_inputs
