/** A plain libp2p host on loopback (TCP, noise, the mesh's yamux) with a fixed key, for tests of what runs over its streams. */
import { noise } from "@chainsafe/libp2p-noise"
import { generateKeyPairFromSeed } from "@libp2p/crypto/keys"
import type { Libp2p, StreamMuxerFactory } from "@libp2p/interface"
import { tcp } from "@libp2p/tcp"
import { createLibp2p } from "libp2p"
import { muxer } from "../../src/p2p/Yamux.js"

/** The mesh's own yamux unless the test passes another. */
export const bareHost = async (seed: number, streamMuxer: () => StreamMuxerFactory = muxer()): Promise<Libp2p> =>
  createLibp2p({
    privateKey: await generateKeyPairFromSeed("Ed25519", new Uint8Array(32).fill(seed)),
    addresses: { listen: ["/ip4/127.0.0.1/tcp/0"] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [streamMuxer],
  })
