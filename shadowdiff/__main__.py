from shadowdiff.cli import main

main()
