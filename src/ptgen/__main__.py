from ptgen.cli import main

main()
