from .data._tokens import tokenizer_from_state
