        result = evaluate(scored, run.val_loader, task, run.precision, run.info)
