from cumtool.cli import main

main()
