import sys

from .play import main

sys.exit(main())
