        x = inputs.flatten(1)  # (B, C, H, W) -> (B, C*H*W)
