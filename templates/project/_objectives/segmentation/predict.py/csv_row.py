    row = {key: value for key, value in record.items() if key != "class_shares"}
    for name, share in record["class_shares"].items():
        row[f"share_{name}"] = share
