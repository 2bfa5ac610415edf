        yield row[text], row[label].strip()
