            columns += ("data_wait",)  # share of the step time spent waiting for the next batch
