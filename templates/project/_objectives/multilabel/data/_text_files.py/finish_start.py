
    def finish(self, vocab: list[str], classes: list[str], separator: str) -> None:
        """Write every file's TokenArrays: each label cell split by `separator` into a
        multi-hot row over `classes` (labels not in `classes` left out)."""
        index = {token: i for i, token in enumerate(vocab)}
        table = np.array([index.get(t, UNK_INDEX) for t in self.ids], dtype=np.int32)
        label_table = np.zeros((len(self.label_ids), len(classes)), np.float32)  # (cells, L)
        for cell, row in self.label_ids.items():
            names = set(label_names(cell, separator))
            label_table[row] = [name in names for name in classes]
