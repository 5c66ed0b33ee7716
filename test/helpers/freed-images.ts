// For tests whose child process needs glibc's heap as an enrollment burst leaves it (the heap trim's:
// test/util/malloc-trim.test.ts, test/daemon/heap-trim.test.ts): JavaScript that allocates 2,000
// buffers of 30 KB (an enrolled image each, 60 MB), keeps a small buffer from every twentieth (live
// between the freed ones, as a burst's other allocations are in the daemon) in `kept`, and drops
// the images. The caller runs a gc() to free them.
export const FREED_IMAGES_JS = `
let images = [];
for (let i = 0; i < 2000; i++) images.push(Buffer.allocUnsafe(30000).fill(i & 255));
const kept = [];
for (let i = 0; i < images.length; i += 20) kept.push(Buffer.from(images[i].subarray(0, 64)));
images = null;
`;
