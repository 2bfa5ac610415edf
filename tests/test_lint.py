"""Rule fixtures: each bad snippet must fire its rule, each good snippet must not.

Snippets marked "guide" are the pytorch-patterns guide's own Bad/Good examples.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptgen.lint import RULES, LintConfig, Severity, lint_paths, lint_source


def codes(
    source: str,
    target: tuple[int, int] = (2, 13),
    name: str = "train.py",
    select: list[str] | None = None,
) -> list[str]:
    config = LintConfig(target_torch=target, select=select)
    return [f.code for f in lint_source(textwrap.dedent(source), Path(name), config)]


EPOCH_LOOP = """
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                F.mse_loss(model(x), y).backward()
                optimizer.step()"""

GUIDE_BLOCK = """
        def block(x, residual):
            x = F.relu(x, inplace=True)
            x += residual
            return x

        class Net(nn.Module):
            def forward(self, x):
"""

BAD: list[tuple[str, str]] = [
    # PGN101 no-grad-in-train-mode (guide)
    (
        "PGN101",
        """
        model.train()
        with torch.no_grad():
            output = model(val_data)  # Dropout still active! BatchNorm uses batch stats!
    """,
    ),
    (
        "PGN101",
        """
        @torch.no_grad()
        def evaluate(model, loader):
            for x, y in loader:
                out = model(x)
    """,
    ),
    (
        "PGN101",
        """
        def validate(self, batch):
            with torch.inference_mode():
                return self.model(batch)
    """,
    ),
    # PGN102 item-before-backward (guide)
    (
        "PGN102",
        """
        loss = criterion(output, target).item()  # Detaches from graph!
        loss.backward()  # Error: can't backprop through .item()
    """,
    ),
    (
        "PGN102",
        """
        def step(model, x, y):
            loss = float(F.mse_loss(model(x), y))
            loss.backward()
    """,
    ),
    # PGN103 inplace-functional-in-forward (guide, inside forward)
    (
        "PGN103",
        """
        class Block(nn.Module):
            def forward(self, x):
                x = F.relu(x, inplace=True)  # Can break gradient computation
                return x
    """,
    ),
    # PGN104 augmented-assign-in-forward (guide, inside forward)
    (
        "PGN104",
        """
        class Block(nn.Module):
            def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
                x += residual                  # In-place add breaks autograd graph
                return x
    """,
    ),
    (
        "PGN104",
        """
        class Block(nn.Module):
            def forward(self, x):
                gate = torch.sigmoid(self.fc(x))
                gate *= self.scale  # sigmoid's backward reads its output
                return x * gate
    """,
    ),
    (
        "PGN103",
        """
        class Head(nn.Module):
            def forward(self, x):
                h = self.relu(self.fc(x))
                h = F.dropout(h, 0.1, self.training, inplace=True)
                return h
    """,
    ),
    # PGN105 persistent-workers-without-workers
    ("PGN105", "loader = DataLoader(ds, batch_size=32, persistent_workers=True)\n"),
    ("PGN105", "loader = DataLoader(ds, num_workers=0, persistent_workers=True)\n"),
    # PGN201 hardcoded-cuda (guide)
    (
        "PGN201",
        """
        model = MyModel().cuda()  # Crashes if no GPU
        data = data.cuda()
    """,
    ),
    ("PGN201", 'x = torch.zeros(3, device="cuda")\n'),
    ("PGN201", 'device = torch.device("cuda:0")\n'),
    ("PGN201", 'batch = batch.to("cuda")\n'),
    # PGN202 model-to-device-in-loop (guide)
    (
        "PGN202",
        """
        for data, target in dataloader:
            model = model.to(device)  # Moves model EVERY iteration!
    """,
    ),
    (
        "PGN202",
        """
        def train(self, loader):
            for batch in loader:
                self.model.to(self.device)
                loss = self.model(batch).sum()
                loss.backward()
    """,
    ),
    # PGN203 hardcoded-autocast-device (the guide's training loop)
    (
        "PGN203",
        """
        def train_one_epoch(model, dataloader, optimizer, criterion, device, scaler=None):
            for data, target in dataloader:
                data, target = data.to(device), target.to(device)
                with torch.amp.autocast("cuda", enabled=scaler is not None):
                    output = model(data)
    """,
    ),
    (
        "PGN203",
        """
        def step(model, x, device):
            with torch.cuda.amp.autocast():
                return model(x.to(device))
    """,
    ),
    # PGN301 unseeded-training
    (
        "PGN301",
        """
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    """,
    ),
    (
        "PGN301",
        """
        import numpy as np
        def main():
            torch.manual_seed(0)
            idx = np.random.permutation(10)
            opt.step()
    """,
    ),
    # PGN302 benchmark-with-determinism
    (
        "PGN302",
        """
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = True
    """,
    ),
    (
        "PGN302",
        """
        torch.use_deterministic_algorithms(True)
        cudnn.benchmark = True
    """,
    ),
    # PGN401 save-whole-module (guide)
    ("PGN401", 'torch.save(model, "model.pt")  # Saves entire model (fragile, not portable)\n'),
    ("PGN401", "torch.save(self.net, path)\n"),
    # PGN402 load-without-weights-only
    ("PGN402", 'state = torch.load("x.pt", map_location="cpu", weights_only=False)\n'),
    # PGN403 load-without-map-location
    ("PGN403", 'state = torch.load("x.pt", weights_only=True)\n'),
    # PGN501 dataloader-default-workers (guide)
    ("PGN501", "dataloader = DataLoader(dataset, batch_size=32)  # num_workers=0, no pin_memory\n"),
    (
        "PGN501",
        """
        def build(ds):
            return DataLoader(ds, batch_size=8, shuffle=True)
    """,
    ),
    # PGN502 pin-memory-mismatch
    (
        "PGN502",
        """
        device = torch.device("cpu")
        loader = DataLoader(ds, num_workers=2, pin_memory=True)
    """,
    ),
    (
        "PGN502",
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        train_loader = DataLoader(ds, num_workers=2)
    """,
    ),
    # PGN503 sync-every-step (the guide's "good" loop reads .item() every step)
    (
        "PGN503",
        """
        def train_one_epoch(model, dataloader, optimizer):
            total_loss = 0.0
            for data, target in dataloader:
                loss = criterion(model(data), target)
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
    """,
    ),
    (
        "PGN503",
        """
        for x in loader:
            out = model(x)
            out.sum().backward()
            opt.step()
            preds.append(out.argmax(1).cpu())
    """,
    ),
    # PGN504 zero-grad-set-to-none-false
    ("PGN504", "optimizer.zero_grad(set_to_none=False)\n"),
    # PGN106 softmax-before-cross-entropy
    (
        "PGN106",
        """
        criterion = nn.CrossEntropyLoss()
        probs = F.softmax(model(x), dim=1)
        loss = criterion(probs, y)
    """,
    ),
    ("PGN106", "loss = F.cross_entropy(torch.log_softmax(logits, 1), y)\n"),
    ("PGN106", "loss = nn.CrossEntropyLoss()(out.softmax(-1), y)\n"),
    # PGN107 sigmoid-before-bce-with-logits
    (
        "PGN107",
        """
        self.loss_fn = nn.BCEWithLogitsLoss(pos_weight=w)
        def step(self, x, y):
            p = torch.sigmoid(self.net(x))
            return self.loss_fn(p, y)
    """,
    ),
    ("PGN107", "loss = F.binary_cross_entropy_with_logits(logits.sigmoid(), y)\n"),
    # PGN108 step-without-zero-grad
    (
        "PGN108",
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
    """,
    ),
    # PGN109 requires-grad-typo
    (
        "PGN109",
        """
        for p in model.backbone.parameters():
            p.require_grad = False
    """,
    ),
    ("PGN109", "w = torch.zeros(3, require_grad=True)\n"),
    # PGN110 backward-under-no-grad
    (
        "PGN110",
        """
        with torch.no_grad():
            for x, y in loader:
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
    """,
    ),
    (
        "PGN110",
        """
        @torch.no_grad()
        def train_step(model, x):
            model(x).sum().backward()
    """,
    ),
    (
        "PGN110",
        """
        def step(model, x, y):
            with torch.inference_mode():
                loss = F.mse_loss(model(x), y)
            loss.backward()
    """,
    ),
    # PGN111 eval-without-train
    (
        "PGN111",
        """
        model.train()
        for epoch in range(epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                F.mse_loss(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val = sum(F.mse_loss(model(x), y) for x, y in val_loader)
    """,
    ),
    # PGN303 shuffled-eval-loader
    ("PGN303", "val_loader = DataLoader(val_set, batch_size=64, shuffle=True, num_workers=2)\n"),
    (
        "PGN303",
        """
        class Data(LightningDataModule):
            def test_dataloader(self):
                return DataLoader(self.test_set, batch_size=64, shuffle=True, num_workers=4)
    """,
    ),
    # PGN103/PGN104 in a helper that a forward calls (the guide's example, issue 33)
    ("PGN103", GUIDE_BLOCK + "                return block(x, self.skip(x))\n"),
    ("PGN104", GUIDE_BLOCK + "                return block(self.conv(x), self.skip(x))\n"),
    (
        "PGN104",
        """
        class Net(nn.Module):
            def forward(self, x):
                return self._gate(self.helper(x))
            def helper(self, x):
                return self._scale(torch.sigmoid(x))
            def _scale(self, h):
                h *= 2
                return h
    """,
    ),
    # PGN701 removed-api / PGN702 deprecated-api (target torch 2.13)
    ("PGN701", "x = torch.solve(b, A)\n"),
    ("PGN701", "from torch import symeig\n"),
    ("PGN702", "import torch\nwith torch.cuda.amp.autocast():\n    y = model(x)\n"),
    ("PGN702", "import torch.nn.functional as F\ny = F.upsample(x, scale_factor=2)\n"),
    ("PGN702", "from functorch import vmap\nys = vmap(f)(xs)\n"),
    # PGN113 weights-created-in-forward (guide)
    (
        "PGN113",
        """
        class ImageClassifier(nn.Module):
            def forward(self, x):
                x = F.conv2d(x, weight=self.make_weight())  # Creates weight each call!
                return x
    """,
    ),
    (
        "PGN113",
        """
        class Head(nn.Module):
            def forward(self, x):
                return nn.Linear(x.shape[-1], 10)(x)
    """,
    ),
    # PGN404 checkpoint-without-optimizer
    (
        "PGN404",
        EPOCH_LOOP + """
            torch.save(model.state_dict(), f"epoch{epoch}.pt")
    """,
    ),
    # PGN601 undocumented-reshape (opt-in)
    (
        "PGN601",
        """
        class Net(nn.Module):
            def forward(self, x):
                return self.fc(x.view(x.size(0), -1))  # What size is this?
    """,
    ),
]

GOOD: list[tuple[str, str]] = [
    # in-place in helpers on fresh tensors, or in helpers no forward calls (issue 33)
    (
        "PGN103",
        """
        def fresh_block(x, residual):
            x = F.relu(x, inplace=True)  # x is a convolution's output: not kept
            return x + residual
        def unused(x):
            x = F.relu(x, inplace=True)
            x += 1
            return x
        class Net(nn.Module):
            def forward(self, x):
                return fresh_block(self.conv(x), x)
    """,
    ),
    (
        "PGN104",
        """
        class Block(nn.Module):
            def __init__(self):
                self.body = nn.Sequential(nn.BatchNorm2d(3), nn.ReLU(inplace=True))
            def forward(self, x):
                return self._add(self.bn(self.conv(x)), x)
            def _add(self, out, identity):
                out += identity  # a normalisation's output: not kept for backward
                return out
            def count(self, n):
                n += 1
                return n
    """,
    ),
    # guide: Good eval mode and the guide's evaluate()
    (
        "PGN101",
        """
        model.eval()
        with torch.no_grad():
            output = model(val_data)
    """,
    ),
    (
        "PGN101",
        """
        @torch.no_grad()
        def evaluate(model, dataloader, criterion, device):
            model.eval()  # Always set eval mode
            for data, target in dataloader:
                output = model(data.to(device))
    """,
    ),
    (
        "PGN101",
        """
        def update_ema(ema_model, model):
            with torch.no_grad():
                for e, p in zip(ema_model.parameters(), model.parameters()):
                    e.mul_(0.99).add_(p, alpha=0.01)
    """,
    ),
    (
        "PGN101",
        """
        def training_step(self, batch):
            with torch.no_grad():
                target = self.teacher_model(batch)
    """,
    ),
    # guide: .item() after backward is fine
    (
        "PGN102",
        """
        loss = criterion(output, target)
        loss.backward()
        print(f"Loss: {loss.item():.4f}")  # .item() after backward is fine
    """,
    ),
    (
        "PGN102",
        """
        value = loss.item()
        loss = criterion(out, y)
        loss.backward()
    """,
    ),
    # guide: Good out-of-place operations, nn.ReLU(inplace=True) modules
    (
        "PGN103",
        """
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.ReLU(inplace=True)
            def forward(self, x):
                x = F.relu(x)
                return self.act(x)
    """,
    ),
    (
        "PGN104",
        """
        class Block(nn.Module):
            def forward(self, x, residual):
                x = x + residual
                n = 0
                for layer in self.layers:
                    n += 1
                    total = x.shape[0]
                    total += 1
                return x
    """,
    ),
    # Safe look-alikes: activations of conv/norm/linear are not kept for backward
    (
        "PGN103",
        """
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(3, 64, kernel_size=3, padding=1),
                    nn.BatchNorm2d(64),
                    nn.ReLU(inplace=True),
                )
            def forward(self, x):
                out = self.bn1(self.conv1(x))
                out = F.relu(out, inplace=True)
                return self.features(out)
    """,
    ),
    (
        "PGN104",
        """
        class Bottleneck(nn.Module):
            def forward(self, x):
                identity = x
                out = self.conv(x)
                out *= self.scale
                out = self.bn2(self.conv2(out))
                out += identity
                return self.relu(out)
    """,
    ),
    (
        "PGN104",
        """
        def accumulate(total, x):
            total += x
            return total
    """,
    ),
    # guide: Good optimized DataLoader (workers > 0); config-driven kwargs are not judged
    (
        "PGN105",
        """
        dataloader = DataLoader(
            dataset,
            batch_size=32,
            shuffle=True,            # Shuffle for training
            num_workers=4,           # Parallel data loading
            pin_memory=True,         # Faster CPU->GPU transfer
            persistent_workers=True, # Keep workers alive between epochs
            drop_last=True,          # Consistent batch sizes for BatchNorm
        )
    """,
    ),
    ("PGN105", "loader = DataLoader(ds, persistent_workers=True, **options)\n"),
    ("PGN105", "loader = DataLoader(ds, num_workers=n, persistent_workers=n > 0)\n"),
    # guide: Good device-agnostic
    (
        "PGN201",
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = MyModel().to(device)
        data = data.to(device)
    """,
    ),
    (
        "PGN201",
        """
        def get_device(name):
            if name == "cuda" and not torch.cuda.is_available():
                raise RuntimeError("no CUDA")
            return torch.device(name)
        if args.cuda:
            model.cuda()
        x = torch.ones(2, device="cuda" if use_gpu else "cpu")
    """,
    ),
    # guide: Good move model once before the loop; batch tensors in the loop are fine
    (
        "PGN202",
        """
        model = model.to(device)
        for data, target in dataloader:
            data, target = data.to(device), target.to(device)
    """,
    ),
    (
        "PGN202",
        """
        for name in model_names:
            model = build(name)
            model.to(device)
        for model in models:
            model.to(device)
        for batch in loader:
            model.to(torch.float16)
    """,
    ),
    # guide: the AMP snippet has no device variable; device.type is the fix
    (
        "PGN203",
        """
        scaler = torch.amp.GradScaler("cuda")
        for data, target in dataloader:
            with torch.amp.autocast("cuda"):
                output = model(data)
    """,
    ),
    (
        "PGN203",
        """
        def step(model, x, device):
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                return model(x.to(device))
    """,
    ),
    # guide: Good full reproducibility setup (seeding via a helper counts)
    (
        "PGN301",
        """
        import random
        import numpy as np
        def set_seed(seed: int = 42) -> None:
            torch.manual_seed(seed)
            torch.cuda.manual_seed_all(seed)
            np.random.seed(seed)
            random.seed(seed)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
        def main():
            set_seed(0)
            idx = np.random.permutation(10)
            optimizer.step()
    """,
    ),
    (
        "PGN301",
        """
        def train_step(model, batch, optimizer):
            loss = model(batch)
            loss.backward()
            optimizer.step()
    """,
    ),
    (
        "PGN302",
        """
        torch.backends.cudnn.benchmark = not deterministic
        torch.backends.cudnn.deterministic = deterministic
    """,
    ),
    # guide: Good save state_dict / complete checkpoint
    (
        "PGN401",
        """
        torch.save(model.state_dict(), "model.pt")
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict()}, path)
        torch.save(model_state, path)
    """,
    ),
    # guide: Good load_checkpoint
    ("PGN402", 'checkpoint = torch.load(path, map_location="cpu", weights_only=True)\n'),
    ("PGN402", "checkpoint = torch.load(path, map_location=device)\n"),
    ("PGN403", 'checkpoint = torch.load(path, map_location="cpu", weights_only=True)\n'),
    ("PGN403", "checkpoint = torch.load(path, **load_kwargs)\n"),
    (
        "PGN501",
        """
        dataloader = DataLoader(dataset, batch_size=32, num_workers=4, shuffle=True)
        val = DataLoader(dataset, batch_size=32, **common)
        def make_eval_loader(ds):
            return DataLoader(ds, batch_size=64)
    """,
    ),
    (
        "PGN502",
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loader = DataLoader(ds, num_workers=2, pin_memory=device.type == "cuda")
    """,
    ),
    (
        "PGN503",
        """
        def train_one_epoch(model, loader, optimizer, log_every=50):
            total = torch.zeros(())
            for step, (x, y) in enumerate(loader):
                loss = model(x, y)
                loss.backward()
                optimizer.step()
                total += loss.detach()
                if step % log_every == 0:
                    print(loss.item())
            return total.item() / len(loader)
    """,
    ),
    # guide: Good zero_grad(set_to_none=True); bare zero_grad() is fine on torch >= 2.0
    (
        "PGN504",
        """
        optimizer.zero_grad(set_to_none=True)
        optimizer.zero_grad()
    """,
    ),
    # PGN106: logits into cross entropy; log_softmax into NLLLoss is the right pairing
    (
        "PGN106",
        """
        criterion = nn.CrossEntropyLoss()
        logits = model(x)
        loss = criterion(logits, y)
        probs = F.softmax(logits, dim=1)  # for reporting only
        nll = F.nll_loss(F.log_softmax(logits, 1), y)
        logits = F.softmax(logits, 1)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    """,
    ),
    (
        "PGN107",
        """
        loss = F.binary_cross_entropy(torch.sigmoid(logits), y)
        loss = nn.BCEWithLogitsLoss()(logits, y)
        p = torch.sigmoid(logits)
        loss = F.binary_cross_entropy_with_logits(logits, y)
    """,
    ),
    # PGN108: zero_grad before the loop (accumulation), in an `if`, or through .grad = None
    (
        "PGN108",
        """
        import torch
        def train(model, loader, optimizer, accumulate=4):
            for i, (x, y) in enumerate(loader):
                F.mse_loss(model(x), y).backward()
                if (i + 1) % accumulate == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        def sgd(model, loader, opt):
            for x in loader:
                model(x).sum().backward()
                opt.step()
                for p in model.parameters():
                    p.grad = None
        def fit(engine, loader):
            for x in loader:
                engine.backward(engine(x))
                engine.step()
        def fit_epoch(self):  # d2l's MXNet trainer: step(1) (a batch size) overwrites grads
            for batch in self.train_dataloader:
                loss = self.model.training_step(batch)
                loss.backward()
                self.optim.step(1)
    """,
    ),
    (
        "PGN109",
        """
        for p in model.parameters():
            p.requires_grad = False
        def set_requires_grad(nets, require_grad=False):
            configure(require_grad=require_grad)
    """,
    ),
    # PGN110: no_grad for evaluation and EMA; enable_grad inside no_grad
    (
        "PGN110",
        """
        def train(model, x, y, ema):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            with torch.no_grad():
                ema.update(model)
                val = model(x)
            with torch.no_grad():
                with torch.enable_grad():
                    model(x).sum().backward()
        def fit_epoch(self):  # d2l: backward and step under no_grad, forward outside
            for batch in self.train_dataloader:
                loss = self.model.training_step(batch)
                self.optim.zero_grad()
                with torch.no_grad():
                    loss.backward()
                    self.optim.step()
    """,
    ),
    # PGN111: train() back at the top of each epoch, or the step in a helper
    (
        "PGN111",
        """
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                F.mse_loss(model(x), y).backward()
                optimizer.step()
            model.eval()
            evaluate(model, val_loader)
        for epoch in range(epochs):
            train_one_epoch(model, train_loader, optimizer)
            model.eval()
    """,
    ),
    (
        "PGN303",
        """
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)
        val_loader = DataLoader(val_set, batch_size=64, shuffle=False, num_workers=4)
        loader = DataLoader(dataset, shuffle=True, num_workers=4)
    """,
    ),
    (
        "PGN701",
        """
        x = torch.linalg.solve(A, b)
        def solve(a, b):
            return a.solve(b)
        solve = my.torch.solve
    """,
    ),
    (
        "PGN702",
        """
        import torch
        with torch.autocast(device_type=device.type):
            y = torch.outer(torch.sigmoid(x), x)
        ger = "torch.ger"
        try:
            from torch import vmap
        except ImportError:
            from functorch import vmap
        scaler = torch.amp.GradScaler("cuda") if _TORCH_GE_2_4 else torch.cuda.amp.GradScaler()
        if Version(torch.__version__) < Version("1.8"):
            outer = torch.ger
    """,
    ),
    (
        "PGN113",
        """
        class Lazy(nn.Module):
            def forward(self, x):
                if self.proj is None:
                    self.proj = nn.Linear(x.shape[-1], 10)
                w = self.weight_standardized()
                probs = nn.Softmax(dim=-1)(x)  # monai transchex: no weights to train
                return F.conv2d(self.proj(x), w, self.bias)
    """,
    ),
    (
        "PGN404",
        EPOCH_LOOP + """
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, p)
        torch.save(model.state_dict(), "final.pt")
    """,
    ),
    (
        "PGN601",
        """
        class Net(nn.Module):
            def forward(self, x):
                x = x.view(x.size(0), -1)  # -> (B, C*H*W)
                return x.flatten(1)  # (B, C*H*W)
    """,
    ),
]


@pytest.mark.parametrize(("code", "source"), BAD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(BAD)])
def test_bad_snippet_fires(code: str, source: str) -> None:
    assert code in codes(source, select=["ALL"])


@pytest.mark.parametrize(
    ("code", "source"), GOOD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(GOOD)]
)
def test_good_snippet_is_quiet(code: str, source: str) -> None:
    assert code not in codes(source, select=["ALL"])


def test_every_rule_has_bad_and_good_fixtures() -> None:
    from test_lint_torchfix import BAD as TORCHFIX_BAD
    from test_lint_torchfix import GOOD as TORCHFIX_GOOD

    bad, good = BAD + TORCHFIX_BAD, GOOD + TORCHFIX_GOOD
    fixtures = {c for c, _ in bad} & {c for c, _ in good}
    assert fixtures == set(RULES) - {"PGN001", "PGN002"}  # file-level, tested elsewhere


def test_rule_metadata_follows_conventions() -> None:
    for code, rule in RULES.items():
        assert code.startswith("PGN") and len(code) == 6 and code == rule.code
        assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert len({r.name for r in RULES.values()}) == len(RULES)


def test_torch_load_without_weights_only_depends_on_target_torch() -> None:
    source = 'state = torch.load(path, map_location="cpu")\n'
    assert "PGN402" in codes(source, target=(2, 5))
    assert "PGN402" not in codes(source, target=(2, 6))


def test_bare_zero_grad_fires_only_before_torch_2() -> None:
    assert "PGN504" in codes("optimizer.zero_grad()\n", target=(1, 13))
    assert "PGN504" not in codes("optimizer.zero_grad()\n", target=(2, 0))


def test_syntax_error_is_a_finding_not_a_crash() -> None:
    found = lint_source("def broken(:\n    pass\n", Path("bad.py"), LintConfig())
    assert [(f.code, f.name, f.line, f.severity) for f in found] == [
        ("PGN001", "syntax-error", 1, Severity.ERROR)
    ]


def test_positions_are_one_based_and_count_characters() -> None:
    found = lint_source('s = "é"; torch.save(model, "m.pt")\n', Path("m.py"), LintConfig())
    assert [(f.code, f.line, f.col, f.end_col) for f in found] == [("PGN401", 1, 10, 35)]


def test_noqa_line_and_file_directives() -> None:
    config = LintConfig()
    line = 'torch.save(model, "a.pt")  # noqa: PGN401\ntorch.save(model, "b.pt")  # noqa\n'
    assert lint_source(line, Path("x.py"), config) == []
    other = 'torch.save(model, "a.pt")  # noqa: E501\n'
    assert [f.code for f in lint_source(other, Path("x.py"), config)] == ["PGN401"]
    whole = '# ptgen: noqa\ntorch.save(model, "a.pt")\nx.cuda()\n'
    assert lint_source(whole, Path("x.py"), config) == []
    some = '# ptgen: noqa: PGN201\ntorch.save(model, "a.pt")\nx.cuda()\n'
    assert [f.code for f in lint_source(some, Path("x.py"), config)] == ["PGN401"]


def test_noqa_codes_may_be_prefixes() -> None:
    source = 'torch.save(model, "a.pt")\nx.cuda()\nopt.zero_grad(set_to_none=False)  # noqa: PGN5\n'
    found = lint_source(source, Path("x.py"), LintConfig())
    assert [f.code for f in found] == ["PGN401", "PGN201"]
    file_level = "# ptgen: noqa: PGN4\n" + source
    assert [f.code for f in lint_source(file_level, Path("x.py"), LintConfig())] == ["PGN201"]
    two = "# ptgen: noqa: PGN4, PGN20\n" + source
    assert lint_source(two, Path("x.py"), LintConfig()) == []


def test_select_and_ignore_match_by_prefix(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('torch.save(model, "a.pt")\nx.cuda()\n', encoding="utf-8")
    assert [f.code for f in lint_paths([tmp_path])] == ["PGN401", "PGN201"]
    assert [f.code for f in lint_paths([tmp_path], select=["PGN4"])] == ["PGN401"]
    assert [f.code for f in lint_paths([tmp_path], ignore=["PGN2"])] == ["PGN401"]
    assert [f.code for f in lint_paths([tmp_path], select=["PGN"], ignore=["PGN401"])] == ["PGN201"]


def test_pyproject_table_configures_the_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ptgen.lint]\nignore = ["PGN401"]\ntarget-torch = "2.4"\n', encoding="utf-8"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(
        'torch.save(model, "a.pt")\nstate = torch.load(p, map_location="cpu")\n'
    )
    assert [f.code for f in lint_paths([tmp_path / "src"])] == ["PGN402"]


def test_finding_carries_rule_metadata() -> None:
    (finding,) = lint_source(
        "loader = DataLoader(ds, num_workers=0, persistent_workers=True)\n",
        Path("d.py"),
        LintConfig(select=["PGN105"]),
    )
    assert (finding.code, finding.name, finding.severity) == (
        "PGN105",
        "persistent-workers-without-workers",
        Severity.ERROR,
    )
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert "ValueError" in finding.message


def test_benchmark_in_the_non_deterministic_branch_is_fine() -> None:
    source = """
        if debug_mode == 0:
            torch.backends.cudnn.deterministic = False
            torch.backends.cudnn.benchmark = True
        else:
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
    """
    assert "PGN302" not in codes(source)


def test_stateful_dataloader_counts_as_dataloader() -> None:
    assert "PGN105" in codes("dl = StatefulDataLoader(ds, persistent_workers=True)\n")


def test_eval_on_the_assigned_result_counts_as_eval_mode(tmp_path: Path) -> None:
    source = (
        "import torch\n\n"
        "def test_shape():\n"
        "    model = build().eval()\n"
        "    with torch.no_grad():\n"
        "        out = model(x)\n"
    )
    path = tmp_path / "t.py"
    path.write_text(source)
    assert [f.code for f in lint_paths([path])] == []


def test_deprecated_and_removed_apis_follow_the_target_torch() -> None:
    assert codes("x = torch.solve(b, A)\n", target=(1, 12)) == ["PGN702"]  # not yet removed
    assert codes("x = torch.solve(b, A)\n", target=(1, 8)) == []  # not yet deprecated
    amp = "import torch\ns = torch.cuda.amp.GradScaler()\n"
    assert codes(amp, target=(2, 3)) == [] and codes(amp, target=(2, 4)) == ["PGN702"]


def test_style_rules_are_opt_in() -> None:
    source = "class N(nn.Module):\n    def forward(self, x):\n        return x.view(-1)\n"
    assert "PGN601" not in codes(source)
    assert "PGN601" not in codes(source, select=["PGN"])
    assert "PGN601" in codes(source, select=["PGN6"])
    assert "PGN601" in codes(source, select=["ALL"])
