    row = {key: value for key, value in record.items() if key != "top_k"}
    for rank, entry in enumerate(record["top_k"][1:], start=2):
        row[f"label_{rank}"], row[f"probability_{rank}"] = entry["label"], entry["probability"]
