import sys

from paddock.cli import main

sys.exit(main())
