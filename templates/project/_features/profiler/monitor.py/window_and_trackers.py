window, with the time spent waiting for data; and the trackers the config asks for (`trackers`).
