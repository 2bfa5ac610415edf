

def build_run(
    config: Config,
    info: DistInfo,
    device: torch.device,
    fold: tuple[list[int], list[int]] | None = None,
) -> Run:
