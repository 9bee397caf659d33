package main

import (
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/cockroachdb/pebble/v2/sstable"
	_ "github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
)

func main() {}
