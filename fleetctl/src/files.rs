//! Reading the manifests named by `-f` arguments.

use std::fs;
use std::path::{Path, PathBuf};

use fleet_api::parse::parse_documents;
use fleet_api::Object;

use crate::error::{Error, Result};
use crate::io::Io;

/// The file extensions read from a directory.
pub const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// Every document of every `-f` argument, in order, each with its source
/// name (the file path, or `-` for stdin). A directory stands for its
/// `*.yaml`, `*.yml` and `*.json` files sorted by name (not recursive). The
/// first parse error aborts.
pub fn read_manifests(args: &[String], io: &mut Io) -> Result<Vec<(String, Object)>> {
    let mut documents = Vec::new();
    for arg in args {
        for source in expand(arg)? {
            let (name, text) = match &source {
                None => ("-".to_string(), io.read_stdin()?),
                Some(path) => (path.display().to_string(), read(path)?),
            };
            for object in parse_documents(&name, &text)? {
                documents.push((name.clone(), object));
            }
        }
    }
    Ok(documents)
}

/// The files an argument stands for (`None`: stdin).
fn expand(arg: &str) -> Result<Vec<Option<PathBuf>>> {
    if arg == "-" {
        return Ok(vec![None]);
    }
    let path = Path::new(arg);
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![Some(path.to_path_buf())]);
    }
    let mut files = Vec::new();
    for entry in fs::read_dir(path).map_err(|e| Error::io(path, e))? {
        let entry = entry.map_err(|e| Error::io(path, e))?;
        let file = entry.path();
        let is_manifest = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
        if is_manifest && file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files.into_iter().map(Some).collect())
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_means_its_manifests_sorted_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.yaml", "a.json", "c.yml", "notes.txt", "d.YAML"] {
            fs::write(dir.path().join(name), "").unwrap();
        }
        fs::create_dir(dir.path().join("sub.yaml")).unwrap();
        let files: Vec<String> = expand(dir.path().to_str().unwrap())
            .unwrap()
            .into_iter()
            .map(|p| p.unwrap().file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["a.json", "b.yaml", "c.yml", "d.YAML"]);
    }

    #[test]
    fn dash_is_stdin_and_missing_files_are_named() {
        assert_eq!(expand("-").unwrap(), vec![None]);
        let err = expand("/no/such/file.yaml").unwrap_err();
        assert!(err.to_string().starts_with("/no/such/file.yaml: "), "{err}");
    }
}
