    profile: bool = option(False, "profile a few steps with torch.profiler")
