            output.write(records(items, masks.write(items, outputs)))
