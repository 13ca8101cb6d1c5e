//! The per-request samples file (`Config::samples`, `--samples`): one CSV line per completed
//! request, `end_us,latency_us,class`, written by the coordinator as each interval's recorders
//! arrive. Not for the interval log (`hlog`) nor the report.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// The samples file being written.
pub(crate) struct Samples {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Samples {
    /// Creates the file and writes its header line.
    pub(crate) fn create(path: &Path) -> Result<Samples, Error> {
        let file = webscope_sys::create_file(path).map_err(|e| Error::Output {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut samples = Samples {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        };
        samples.put(b"end_us,latency_us,class\n")?;
        Ok(samples)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(|e| Error::Output {
            path: self.path.clone(),
            source: e,
        })
    }

    /// Writes samples as the recorder keeps them: (end since the start ns, latency ns, class).
    pub(crate) fn write(&mut self, samples: &[(u64, u64, u16)]) -> Result<(), Error> {
        for (end, latency, class) in samples {
            let line = format!("{},{},{class}\n", end / 1000, latency / 1000);
            self.put(line.as_bytes())?;
        }
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        self.out.flush().map_err(|e| Error::Output {
            path: self.path.clone(),
            source: e,
        })
    }
}
