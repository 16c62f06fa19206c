#if canImport(SwiftUI)
    // Not compiled in this project's CI: it runs on Linux, where SwiftUI does not exist. Everything
    // this file decides is read from ModalStackSession, whose logic the Linux tests cover.
    import SwiftUI

    extension View {
        /// Presents a ``ModalStackSession``'s navigation from the root view. Each level (the root
        /// view, and each presented sheet, cover or popover) is a `NavigationStack` showing that
        /// level's path (``ModalStackSession/path(at:)``); each modal level is a nested `.sheet`
        /// (with its detents and `interactiveDismissDisabled`), `.fullScreenCover` or `.popover`.
        /// One view builder, `destination`, draws both: presented modals (``Screen/presented(_:)``)
        /// and pushed screens (``Screen/pushed(_:)``). An alert or confirmation dialog on top shows
        /// its buttons and roles (a tap answers it with the button's id), and a custom or progress
        /// dialog on top is an overlay showing `dialog`. A swipe-down reports
        /// ``ModalStackSession/userDismissed(level:)``, a back swipe or back button
        /// ``ModalStackSession/userPopped(level:count:)``.
        ///
        /// The root view is wrapped in a `NavigationStack` of its own: do not put it inside another.
        ///
        /// Not compiled in this project's CI (Linux has no SwiftUI): it is a thin reading of the
        /// model, whose logic is tested there.
        ///
        /// ```swift
        /// RootView()
        ///     .modalStack(model) { screen in
        ///         switch screen.destination {
        ///         case "settings": SettingsView()
        ///         case "privacy": PrivacyView()    // pushed inside the settings sheet
        ///         default: Text(screen.destination)
        ///         }
        ///     } dialog: { presentation in
        ///         PaywallDialog(payload: presentation.payload)
        ///     }
        /// ```
        public func modalStack<Destination: View, Dialog: View>(
            _ model: ModalStackSession,
            @ViewBuilder destination: @escaping (Screen) -> Destination,
            @ViewBuilder dialog: @escaping (Presentation) -> Dialog
        ) -> some View {
            PathStack(model: model, level: .root, root: self, destination: destination)
                .modifier(ModalStackLevel(model: model, level: 0, destination: destination, dialog: dialog))
        }
    }

    /// One level's `NavigationStack`: `root`, with the level's pushed screens on top of it, each
    /// drawn by `destination`.
    private struct PathStack<Root: View, Destination: View>: View {
        let model: ModalStackSession
        let level: NavigationLevel
        let root: Root
        let destination: (Screen) -> Destination

        var body: some View {
            // A binding through a key path of the model rather than `Binding(get:set:)`: no closure
            // whose isolation depends on how the SDK declares that initializer.
            NavigationStack(path: Bindable(model)[dynamicMember: \.[pathOf: level]]) {
                root.navigationDestination(for: PathEntry.self) { entry in destination(.pushed(entry)) }
            }
        }
    }

    /// What the view at depth `level` presents: the next level, and the alert-like entry when it is the deepest.
    private struct ModalStackLevel<Destination: View, Dialog: View>: ViewModifier {
        let model: ModalStackSession
        let level: Int
        let destination: (Screen) -> Destination
        let dialog: (Presentation) -> Dialog

        func body(content: Content) -> some View {
            content
                .sheet(item: binding(.sheet)) { presentation in
                    next(presentation)
                        .presentationDetents(detents(of: presentation))
                        .interactiveDismissDisabled(isSwipeDisabled(presentation))
                }
                #if os(macOS)
                    .sheet(item: binding(.fullScreenCover)) { next($0) }
                #else
                    .fullScreenCover(item: binding(.fullScreenCover)) { next($0) }
                #endif
                #if os(tvOS) || os(watchOS)
                    .sheet(item: binding(.popover)) { next($0) }  // no popovers there
                #else
                    .popover(item: binding(.popover)) { next($0) }
                #endif
                .modifier(AlertLayer(model: model, isDeepest: level == model.levels.count, dialog: dialog))
        }

        /// The entry this level shows as `kind`; set to `nil` by SwiftUI when the user closes it.
        private func binding(_ kind: ModalStyle.Kind) -> Binding<Presentation?> {
            Binding(
                get: { model.presentation(atLevel: level, as: kind) },
                set: {
                    if $0 == nil, model.presentation(atLevel: level, as: kind) != nil {
                        model.userDismissed(level: level)
                    }
                }
            )
        }

        /// The presented level: its own navigation stack, presenting the level above it.
        private func next(_ presentation: Presentation) -> AnyView {
            AnyView(
                PathStack(
                    model: model, level: .presentation(presentation.id), root: destination(.presented(presentation)),
                    destination: destination
                )
                .modifier(ModalStackLevel(model: model, level: level + 1, destination: destination, dialog: dialog))
            )
        }

        private func isSwipeDisabled(_ presentation: Presentation) -> Bool {
            if case .sheet(_, let disabled) = presentation.style {
                disabled || presentation.locked
            } else {
                presentation.locked
            }
        }

        private func detents(of presentation: Presentation) -> Set<PresentationDetent> {
            guard case .sheet(let detents, _) = presentation.style, !detents.isEmpty else { return [.large] }
            return Set(
                detents.compactMap { detent -> PresentationDetent? in
                    let parts = detent.rawValue.split(separator: ":", maxSplits: 1).map(String.init)
                    switch (parts.first ?? "", parts.count == 2 ? Double(parts[1]) : nil) {
                    case ("medium", nil): return .medium
                    case ("large", nil): return .large
                    case ("fraction", let share?): return .fraction(share)
                    case ("height", let points?): return .height(points)
                    default: return nil
                    }
                })
        }
    }

    /// The alert-like entry on top, presented by the deepest level only.
    private struct AlertLayer<Dialog: View>: ViewModifier {
        let model: ModalStackSession
        let isDeepest: Bool
        let dialog: (Presentation) -> Dialog

        private var shown: Presentation? { isDeepest ? model.alert : nil }

        func body(content: Content) -> some View {
            content
                .alert(title(.alert), isPresented: isPresented(.alert), presenting: shown) { presentation in
                    buttons(presentation)
                } message: { presentation in
                    message(presentation)
                }
                .confirmationDialog(
                    title(.confirmationDialog), isPresented: isPresented(.confirmationDialog),
                    titleVisibility: .visible,
                    presenting: shown
                ) { presentation in
                    buttons(presentation)
                } message: { presentation in
                    message(presentation)
                }
                .overlay {
                    if let shown, shown.style.kind == .dialog || shown.style.kind == .progress {
                        dialog(shown)
                    }
                }
        }

        private func title(_ kind: ModalStyle.Kind) -> String {
            switch shown?.style {
            case .alert(let title, _, _) where kind == .alert: title
            case .confirmationDialog(let title, _, _) where kind == .confirmationDialog: title
            default: ""
            }
        }

        /// Shown while the top is of `kind`; SwiftUI's own dismissal after a tap changes nothing,
        /// since the button's action already answered.
        private func isPresented(_ kind: ModalStyle.Kind) -> Binding<Bool> {
            Binding(get: { shown?.style.kind == kind }, set: { _ in })
        }

        @ViewBuilder
        private func buttons(_ presentation: Presentation) -> some View {
            ForEach(presentation.style.buttons) { button in
                Button(button.label, role: role(of: button)) { model.answer(buttonID: button.id) }
            }
        }

        @ViewBuilder
        private func message(_ presentation: Presentation) -> some View {
            switch presentation.style {
            case .alert(_, let message?, _), .confirmationDialog(_, let message?, _): Text(message)
            default: EmptyView()
            }
        }

        private func role(of button: AlertButton) -> SwiftUI.ButtonRole? {
            switch button.role {
            case .destructive: .destructive
            case .cancel: .cancel
            case .default: nil
            }
        }
    }
#endif
