    lines += [f"wrote {path}" for key, path in result.items() if key.endswith(("_csv", "_png"))]
