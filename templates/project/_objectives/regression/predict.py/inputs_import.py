from .data._inputs import Raw, RawInputs
