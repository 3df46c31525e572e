import subprocess

subprocess.run(['echo', 'wscan-corpus-hostile-sample'])
