    if isinstance(scheduler, OneCycle):
        return scheduler.replan(total, steps_per_epoch)
