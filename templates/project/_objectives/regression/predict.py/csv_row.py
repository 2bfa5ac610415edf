    row = {key: value for key, value in record.items() if key != "values"}
    for i, value in enumerate(record.get("values", []), start=1):
        row[f"value_{i}"] = value
