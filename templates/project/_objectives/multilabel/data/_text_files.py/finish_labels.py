            labels = label_table[np.frombuffer(label_ids, dtype=np.int64)]  # (rows, L)
