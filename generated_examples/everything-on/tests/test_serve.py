"""`serve` (the serve feature): dynamic batching gathers concurrent inputs into one forward
pass, and bad options are refused in one line before anything listens."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi", reason="serve needs its extra: pip install -e '.[serve]'")

from everything_on.cli import main  # noqa: E402
from everything_on.serve import Batcher  # noqa: E402


def test_concurrent_inputs_share_a_forward_pass_and_come_back_in_order() -> None:
    calls: list[list[int]] = []

    def run(samples: list[int]) -> list[int]:
        calls.append(samples)
        return [10 * sample for sample in samples]

    async def requests() -> list[list[int]]:
        batcher = Batcher(run, max_batch_size=4, max_wait_s=0.05)
        worker = asyncio.create_task(batcher.work())
        results = await asyncio.gather(*(batcher.submit([i, i + 100]) for i in range(3)))
        worker.cancel()
        return results

    assert asyncio.run(requests()) == [[0, 1000], [10, 1010], [20, 1020]]
    assert [len(batch) for batch in calls] == [4, 2]  # six inputs, batches of at most four


def test_a_bad_limit_is_refused_in_one_line(capsys) -> None:
    status = main(["serve", "--checkpoint", "missing.pt", "--max-batch-size", "0"])
    assert status == 1
    assert capsys.readouterr().err.strip() == "error: --max-batch-size must be at least 1; got 0"
