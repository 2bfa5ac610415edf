    row = {key: value for key, value in record.items() if key != "probabilities"}
    row["labels"] = "|".join(record["labels"])
    for name, probability in record["probabilities"].items():
        row[f"probability_{name}"] = probability
