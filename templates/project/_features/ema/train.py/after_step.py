            if run.ema is not None:
                run.ema.update()
