    spare = spare_forwards(model, len(loader), info, device)
