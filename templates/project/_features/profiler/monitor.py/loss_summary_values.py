            data_wait=min(waiting / elapsed, 1.0),
