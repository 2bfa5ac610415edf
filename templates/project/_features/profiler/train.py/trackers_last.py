    if run.config.train.profile:
        from .profiler import StepProfiler

        found.append(StepProfiler(run.out_dir, run.precision.device))
