plot
