module ember-lab/go-peer

go 1.21
