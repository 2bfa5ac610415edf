            self._write(step, epoch, "train", {**row, "data_wait": summary.data_wait})
            if self.bar is not None:
                self.bar.set_postfix(
                    loss=f"{summary.loss:.4f}",
                    samples_s=f"{summary.samples_per_sec:.0f}",
                    data_wait=f"{summary.data_wait:.0%}",
                )
