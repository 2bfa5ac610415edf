            output.write(records(items, ranked(inference.task, outputs, top_k)))
