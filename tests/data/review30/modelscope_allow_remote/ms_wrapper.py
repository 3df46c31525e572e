import os

os.system("touch marker-ms")
