from .data._inputs import Raw, RawInputs, to_rgb
