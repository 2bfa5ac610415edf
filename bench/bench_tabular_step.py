"""Where the tabular epoch's gap to a hand-written loop goes (issue 35), one piece at a time.

The tabular-regression project at its defaults (`csv` kind, the default MLP, batch 32,
fused AdamW, clipping at 1.0) on a numeric CSV of `--rows` rows; the run is built with the
project's own `train.build_run`. In one process, one thread, interleaved (`--repeats`
rounds of `--steps` steps each, order reversed every other round), five loops that add
one piece each, and the project's own loop:

- hand: `X[perm[i:i + 32]]` slices; zero_grad, forward, loss, backward, clipping over
  `model.parameters()`, step (bench_side_by_side.py's HAND);
- hand + loader: the same step, its batches from the project's training DataLoader;
- engine: slices, the project's `engine.forward_backward` and `engine.optimizer_step`;
- engine + bookkeeping: and the scheduler's step, the monitor's `record_step`,
  `signals.agreed()` and a metrics row every `train.log_every` steps;
- generated: all of it, batches from the DataLoader through `monitor.progress`;
- train.train: the project's own loop for one whole epoch (`train.epochs=1`, the epoch
  counter reset each round), with its evaluation pass and two checkpoints.

Microseconds a step, the median and the best round of each.

    PYTHONPATH=src python bench/bench_tabular_step.py --json bench/bench_tabular_step.json
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _common import generate_project, import_project, machine, print_table, write_json
from bench_side_by_side import write_table_file


def loops(mods: dict[str, Any], data: Path, out: Path, steps: int) -> dict[str, Callable[[], int]]:
    engine, train = mods["engine"], mods["train"]
    settings = [f"data.root={data}", f"train.out_dir={out}", "train.epochs=1"]
    config = mods["config"].load_config(overrides=settings)
    run = train.build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    monitor = train.start_monitor(run)
    model, optimizer, task, precision = run.train_model, run.optimizer, run.task, run.precision
    x, y = run.train_loader.dataset.inputs, run.train_loader.dataset.targets
    log_every = config.train.log_every

    def hand_step(inputs: torch.Tensor, targets: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        task.loss(model(inputs=inputs), targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    def engine_step(batch: dict[str, torch.Tensor], k: int, bookkeeping: bool) -> None:
        loss = engine.forward_backward(
            model, engine.to_device(batch, precision.device), task, precision
        )
        engine.optimizer_step(optimizer, precision.scaler, 1.0)
        if bookkeeping:
            run.scheduler.step()
            monitor.record_step(loss, k)
            run.signals.agreed()
            if k % log_every == 0:
                monitor.log_train(k, 1, 1e-3)

    def slices() -> Any:
        perm = torch.randperm(len(y))
        return (perm[i : i + 32] for i in range(0, steps * 32, 32))

    def loader(wrapped: bool = False) -> Any:
        run.sampler.set_epoch(0)
        batches = monitor.progress(run.train_loader, steps, "") if wrapped else run.train_loader
        return itertools.islice(batches, steps)

    def hand(batches: Any = None) -> int:
        if batches is None:
            return len([hand_step(x[r], y[r]) for r in slices()])
        return len([hand_step(b["inputs"], b["targets"]) for b in batches])

    def engine_loop(bookkeeping: bool, batches: Any = None) -> int:
        if batches is None:
            batches = ({"inputs": x[r], "targets": y[r]} for r in slices())
        return len([engine_step(batch, k, bookkeeping) for k, batch in enumerate(batches)])

    def whole_epoch() -> int:
        run.state.epoch = run.state.batch_in_epoch = 0
        with run.signals.installed():
            train.train(run, train.start_monitor(run))
        return len(run.train_loader)

    return {  # each runs its loop and returns how many steps it took
        "hand": hand,
        "hand + loader": lambda: hand(loader()),
        "engine": lambda: engine_loop(False),
        "engine + bookkeeping": lambda: engine_loop(True),
        "generated": lambda: engine_loop(True, loader(wrapped=True)),
        "train.train": whole_epoch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        project = generate_project(where, task="tabular-regression", dataset="csv")
        data = write_table_file(where / "table.csv", args.rows)
        contenders = loops(import_project(project), data, where / "run", args.steps)
        results: dict[str, list[float]] = {name: [] for name in contenders}
        for r in range(args.repeats):
            for name in list(contenders)[:: 1 if r % 2 == 0 else -1]:
                start = time.perf_counter()
                steps = contenders[name]()
                results[name].append((time.perf_counter() - start) / steps * 1e6)
    hand = statistics.median(results["hand"])
    rows = [
        [name, f"{statistics.median(v):.0f}", f"{min(v):.0f}", f"{hand / statistics.median(v):.3f}"]
        for name, v in results.items()
    ]
    print_table(["loop", "median us/step", "best us/step", "speed vs hand (medians)"], rows)
    payload = {"machine": machine(), "args": {**vars(args), "json": None}, "us_per_step": results}
    write_json(args.json, payload)


if __name__ == "__main__":
    main()
