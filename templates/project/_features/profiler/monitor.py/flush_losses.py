        waiting = torch.tensor([self.waiting], device=losses.device)  # (1,), one all-reduce
        values = all_reduce_sum(torch.cat([losses, waiting]), info) / info.world_size
        *values, waiting = values.cpu().tolist()  # the one host sync per log interval
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.losses, self.started, self.waiting = [], time.perf_counter(), 0.0
        self.waited, self.elapsed = self.waited + waiting, self.elapsed + elapsed
