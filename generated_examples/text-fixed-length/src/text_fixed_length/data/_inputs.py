"""Raw inputs for `predict` and `export`: what a dataset kind provides, and the readers.

A dataset kind that can read raw inputs defines `raw_inputs(cfg, state) -> RawInputs`: how
texts become model inputs, from the options and the state saved in a checkpoint
alone (the training data need not exist). `predict` streams the raw inputs
through `read` and `prepare`, batches them with `collate_fn` and runs the model; `export`
writes `preprocessing` into the sidecar of an exported model, for programs that feed it
without this project.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._raw import Raw
from ._raw import RawInputs as RawInputs  # re-exported: the dataset kinds import it from here
from ._text_files import text_inputs


def texts(sources: list[str]) -> Iterator[Raw]:
    """Texts of predict's inputs by the rules of training, with the default columns: kept
    for dataset files written before `_text_files.text_inputs`, which the kinds use."""
    return text_inputs(sources)
