            output.write(records(items, values(inference.task, outputs)))
