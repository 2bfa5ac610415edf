    if run.ema is not None:  # the average goes on exactly where it was on resume
        state.update(run.ema.state_dict())
