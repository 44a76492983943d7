from hkv.cli.main import main

main()
