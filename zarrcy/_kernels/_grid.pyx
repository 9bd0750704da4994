# placeholder, replaced by the grid kernel
def _ping():
    return 1
