package config

// NFSSync configures nfs-sync. Its keys are filled in by the nfs-sync work.
type NFSSync struct{}

func defaultNFSSync() NFSSync { return NFSSync{} }

func (n *NFSSync) validate() error { return nil }
