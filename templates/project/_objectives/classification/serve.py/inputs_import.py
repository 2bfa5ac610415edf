from .data._inputs import RawInputs
