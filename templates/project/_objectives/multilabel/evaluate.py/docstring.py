its data prepared with the state saved in the checkpoint, exactly as in training. Labels are
decided with the per-label thresholds saved in the checkpoint (tuned on the validation
split in training); besides micro-F1, macro-F1 and mAP, the result holds per label
precision, recall, F1, average precision, support and threshold.
